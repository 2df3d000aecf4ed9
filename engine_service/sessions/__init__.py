"""Authoritative matches (ARCHITECTURE.md section 4): :mod:`.api` is the contract with the
transport, :class:`.manager.MatchManager` implements it, :class:`.config.SessionConfig`
holds its settings."""
