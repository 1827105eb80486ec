"""The local TOML store: paths (paths.py), typed model (model.py), the locked atomic
store (store.py) and its parse cache (cache.py). Import from those modules."""
