"""`yullu install --service`: a systemd user unit (Linux) or launchd agent (macOS) that runs
`yullu serve` with the home, port and config file the hooks were pinned to."""

from __future__ import annotations

import platform
import shutil
import subprocess
from pathlib import Path

from yullu_core.env import env_str

from .files import InstallError, pinned_env, say, write_if_changed, yullu_bin


def service_env() -> dict[str, str]:
    """What the service's `yullu serve` needs to be the server the hooks were pinned to (same
    home, port and config file), whatever the service manager's own environment holds."""
    env = pinned_env()
    if config := env_str("YULLU_CONFIG"):
        env["YULLU_CONFIG"] = str(Path(config).expanduser().resolve())
    # The service manager's PATH rarely holds ~/.local/bin or npm's folder: without this the
    # service's server finds no `claude`/`codex` reasoner that `yullu doctor` in a shell finds.
    if path := env_str("PATH"):
        env["PATH"] = path
    return env


def service_file(home: Path) -> tuple[Path, str]:
    from xml.sax.saxutils import escape

    binary = yullu_bin()
    env = service_env()
    if platform.system() == "Darwin":
        variables = "".join(f"<key>{escape(k)}</key><string>{escape(v)}</string>" for k, v in env.items())
        plist = f"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0"><dict>
  <key>Label</key><string>dev.yullu.server</string>
  <key>ProgramArguments</key><array><string>{escape(binary)}</string><string>serve</string></array>
  <key>EnvironmentVariables</key><dict>{variables}</dict>
  <key>RunAtLoad</key><true/><key>KeepAlive</key><true/>
</dict></plist>
"""
        return home / "Library" / "LaunchAgents" / "dev.yullu.server.plist", plist
    # systemd: a quoted assignment per line; `%` starts a specifier, so it is doubled.
    quoted = {k: v.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%") for k, v in env.items()}
    environment = "".join(f'Environment="{k}={v}"\n' for k, v in quoted.items())
    unit = f"""[Unit]
Description=Yul'lu memory server

[Service]
{environment}ExecStart={binary} serve
Restart=on-failure

[Install]
WantedBy=default.target
"""
    return home / ".config" / "systemd" / "user" / "yullu.service", unit


def install_service(home: Path) -> None:
    path, text = service_file(home)
    if write_if_changed(path, text):
        say(f"service: wrote {path}")
    if path.suffix == ".service" and shutil.which("systemctl"):
        subprocess.run(["systemctl", "--user", "daemon-reload"], capture_output=True, check=False)
        command = ["systemctl", "--user", "enable", "--now", "yullu.service"]
    elif path.suffix == ".plist" and shutil.which("launchctl"):
        command = ["launchctl", "load", "-w", str(path)]
    else:
        say(f"service: no systemctl or launchctl here; start `{yullu_bin()} serve` yourself")
        return
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        # The reason is the last line saying it failed: `enable --now` first reports the symlink it created.
        lines = (done.stderr or done.stdout).strip().splitlines()
        why = next((line for line in reversed(lines) if "fail" in line.lower()), lines[-1] if lines else "")
        raise InstallError(
            f"the service file is written ({path}) but `{' '.join(command)}` failed"
            f" ({why[:200] or f'exit {done.returncode}'}); fix that and run it, or start `yullu serve`."
        )
    say(f"service: enabled and started ({' '.join(command)})")


def uninstall_service(home: Path) -> bool:
    path, _ = service_file(home)
    if not path.exists():
        return False
    if path.suffix == ".service" and shutil.which("systemctl"):
        subprocess.run(["systemctl", "--user", "disable", "--now", "yullu.service"], capture_output=True, check=False)
    elif path.suffix == ".plist" and shutil.which("launchctl"):
        subprocess.run(["launchctl", "unload", "-w", str(path)], capture_output=True, check=False)
    path.unlink()
    say(f"service: stopped and removed {path}")
    return True
