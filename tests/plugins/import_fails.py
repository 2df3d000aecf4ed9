"""A plugin module that fails at import (tests only)."""

raise ImportError("this plugin needs a package that is not installed")
