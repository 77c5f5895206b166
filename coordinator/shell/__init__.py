"""The I/O shell: everything that touches sockets, the event loop or another process.

``server`` (sockets, framing, ordered writes, back-pressure) hands frames to ``connection``
(sans-IO: what a frame means for its connection) and on to the handlers; ``runtime`` carries
out what comes back, the state machine's ``Effects`` through ``driver`` (sans-IO, shared with
the tests' drivers) on the loop's keyed ``timers``; ``regex_worker`` is the child process that
compiles clients' topic regexes; ``collector`` tunes the garbage collector for the daemon.
"""
