"""Security: listeners by security protocol, TLS, SASL (PLAIN, SCRAM) and group/topic ACLs.

Kept apart from the request path: the server asks ``gate`` whether a request may run before
authentication, handlers ask the broker's ``Security`` whether a principal may do something.
"""
