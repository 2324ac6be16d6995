"""Where the `yullu` console script pointed before the layout move (`yullu_site.cli:main`; the
command now lives in yullu_cli/). A venv installed before the move still runs this after a
`git pull`: say in one sentence how to update it instead of failing with an import traceback.
Imports nothing: that venv's editable install does not know yullu_cli or yullu_core."""

import sys


def main() -> None:
    root = __file__.rsplit("/yullu_site/", 1)[0]
    sys.exit(
        "yullu: this checkout's code moved (the command is now yullu_cli); update the venv with "
        f"`make -C {root} install`, then run `yullu install` again so the hooks follow."
    )
