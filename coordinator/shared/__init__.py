"""Small pieces every room uses: the ``clock``, one-line ``errors``, the node's ``events``,
the virtual topic ``catalog``, users and ACL bindings as data (``accounts``), RE2 topic
matching (``topic_regex``), outage logging (``outage``) and owner-only files
(``private_files``). None of them imports another room but ``group``'s and ``cluster``'s
event types."""
