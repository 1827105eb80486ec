"""nodecli: administration tool for file-transfer nodes and their collaboration service."""

__version__ = "0.1.0"
