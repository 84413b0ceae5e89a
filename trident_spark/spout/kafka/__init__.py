"""The Kafka spout: its config, broker client, offsets, consumer pool, Python data source and
executor read, adaptive batch sizing, Spark's own Kafka source and the dead-letter topic."""
