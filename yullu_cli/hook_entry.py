"""The assistant hooks' command: `python -I -S hook_entry.py inject` (what `yullu install` writes).

`-S` skips site-packages and the .pth files an install adds, `-I` ignores PYTHON* variables and
the user's site: the interpreter is up in ~10 ms instead of the ~60 ms the `yullu` console script
takes (site, argparse, the CLI module). The hooks import only the standard library, so the folder
holding this package is all that has to be on the path. Standard library only, here too.
"""

import os
import sys

if __name__ == "__main__":
    package_dir = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.dirname(package_dir))
    # Named from this file's folder, so the entry keeps working if the package is renamed.
    hooks = __import__(f"{os.path.basename(package_dir)}.hooks", fromlist=["main"])
    sys.exit(hooks.main(sys.argv[1:]))
