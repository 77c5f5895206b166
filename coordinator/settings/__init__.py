"""The daemon's settings: ``config`` (Kafka's names and defaults, from the TOML file, the
environment and the command line), ``consumer_options`` (KIP-848's group.consumer.* options),
``limits`` (what one connection may cost) and ``ports``. Each subsystem's own settings stay in
its room (``security.config``, ``upstream.settings``, ``console.settings``,
``telemetry.settings``); ``config`` gathers them."""
