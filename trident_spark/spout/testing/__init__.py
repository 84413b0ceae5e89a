"""The testing spouts (Storm's ``trident.testing``): ``FeederBatchSpout``, ``FixedBatchSpout``,
the batch files they store and their Spark data sources."""
