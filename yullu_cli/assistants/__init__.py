"""What `yullu install` writes for each assistant (claude.py, codex.py, cursor.py), the service
unit (service.py), the helpers every writer shares (files.py) and the record that lets uninstall put
the user's files back byte for byte (tracking.py). Entry points: yullu_cli/install.py."""
