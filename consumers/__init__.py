"""posewire consumers: pose vectors -> avatar state, and the subscribing client."""

__all__: list[str] = []
