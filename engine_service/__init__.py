"""Card-game engine service: authoritative matches of four trick-taking games over gRPC."""

__version__ = "0.1.0"
