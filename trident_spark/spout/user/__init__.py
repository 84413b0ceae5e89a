"""Spouts of your own in Trident's shapes (``IBatchSpout``, ``IPartitionedTridentSpout``,
``IOpaquePartitionedTridentSpout``, ``ITridentSpout``, ``IRichSpout``) and the ``UserSpout`` that runs
them behind the ``Spout`` interface: its batches, its Python data source, emitted tuples as rows."""
