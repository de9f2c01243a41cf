"""Content loaders; the data files beside them (TOML) are the content itself."""
