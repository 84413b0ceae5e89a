"""Shared test setup: the service fixtures (Kafka, Redis, Elasticsearch) and a Spark session."""

from __future__ import annotations

pytest_plugins = ["tests.servicefixtures", "tests.sparkfixtures"]
