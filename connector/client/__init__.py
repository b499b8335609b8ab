"""pyq's Kafka client, built on the project's own sans-I/O codec (broker_sim.protocol)."""
