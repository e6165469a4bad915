"""The training layer: ``Module`` and ``BucketingModule``, optimizers and schedulers,
metrics, initializers, callbacks, data iterators (``io/``), datasets, images and RecordIO,
the kvstore and data parallelism over devices and processes (``parallel/``)."""
