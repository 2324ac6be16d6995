"""What every HTTP request passes before Django or the MCP app sees it: the gate (a token before
any body is read, bodies bounded: gate.py) and the long-lived threads of the hooks' requests
(lanes.py). Wired together in yullu_site/asgi.py."""
