"""The web console (``--http-listen``): live pages and a JSON API over the node's state.

It runs on the daemon's own event loop and reads the state machine in memory; it writes
nothing unless ``--http-admin`` allows its three actions. Importing this package costs
nothing: aiohttp and Jinja2 are imported by ``app`` only when the console is on.
"""
