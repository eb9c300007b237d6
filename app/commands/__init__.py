"""One module per `puffer-tui` subcommand, each with add_parser(subparsers, name, help)."""
