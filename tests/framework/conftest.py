"""Fixtures of the framework runtime tests."""

from tests.framework.framework_helpers import table

__all__ = ["table"]
