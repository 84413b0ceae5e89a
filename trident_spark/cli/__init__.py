"""The ``trident-spark`` command: one module per subcommand, registered in ``main``."""
