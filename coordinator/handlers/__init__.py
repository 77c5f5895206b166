"""Request handlers: decoded request in, response message (or a deferred one) out."""
