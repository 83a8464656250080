"""Kafka as a source: ``kafka://HOST:PORT[,HOST:PORT]/TOPIC`` URIs, the local development broker
(``kafka up``) and ``generate --out kafka://...``."""
