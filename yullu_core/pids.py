"""Whether a process id names a live process, asked the one way every caller asks it."""

from __future__ import annotations

import os


def pid_exists(pid: int) -> bool:
    """Signal 0 checks without sending anything; a process of another user (PermissionError) exists too."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
