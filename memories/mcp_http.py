def build_mcp_asgi():
    raise NotImplementedError
