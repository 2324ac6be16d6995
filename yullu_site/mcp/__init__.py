"""The MCP stack: the server assembled from each app's tools (server.py), its Streamable HTTP app
behind the token and Host/Origin checks (http.py), and the transport that answers each POST in JSON
or SSE (transport.py, built on internals of the pinned SDK). Reached only from yullu_site.asgi and
`yullu stdio`."""
