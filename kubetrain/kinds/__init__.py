"""One registration per kind (`registration.py`), collected in `registry.py`; everything that
lists kinds (CRDs, served kinds, the client, the resource table, webhook routes, the CLI) reads
the registry. The kinds with planners of their own are packages here (`mpijob/`, `chainerjob/`,
`caffe2job/`: wire types, description, defaults, validation, planner and `REGISTRATION`); the
replica-spec kinds on the generic reconciler are packages of `kubetrain.frameworks`."""
