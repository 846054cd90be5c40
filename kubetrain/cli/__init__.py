"""The `kubetrain` command: run, up, get, describe, logs, delete, wait, validate, crds."""
