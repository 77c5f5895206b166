"""A coordinator cluster: nodes sharing groups through PostgreSQL, groups placed on
coordinator partitions as Kafka places them, partition leases with fencing epochs."""
