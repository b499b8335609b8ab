"""Auto-registration: PySpark discovers modules named ``pyspark_*`` that export
``DefaultSource`` and registers them, so ``format("pyq")`` works after ``pip install``."""

from connector.data_source import PyqDataSource as DefaultSource

__all__ = ["DefaultSource"]
