"""The Spark structured-streaming source: offset planning (driver) and reading (executors)."""
