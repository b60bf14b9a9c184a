"""posewire producers: landmarks and recordings -> pose vectors, and the publishing client."""

__all__: list[str] = []
