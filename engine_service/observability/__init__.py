"""Operations: the structlog configuration (:mod:`.logging`) and every Prometheus metric of the
service in one module (:mod:`.metrics`), ARCHITECTURE.md section 6."""
