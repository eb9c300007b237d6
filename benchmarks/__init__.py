"""Benchmarks run by `puffer-tui bench`: each module has add_arguments(parser) and run(args)."""
