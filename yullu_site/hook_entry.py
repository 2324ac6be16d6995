"""Where hooks installed before the layout move point (`python -I -S …/yullu_site/hook_entry.py
inject || true`): run the entry that moved to yullu_cli/, so those hooks keep working after a
`git pull` until `yullu install` rewrites them. Standard library only, like the entry itself."""

import os
import runpy
import sys

if __name__ == "__main__":
    entry = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "yullu_cli", "hook_entry.py")
    sys.argv[0] = entry
    runpy.run_path(entry, run_name="__main__")
