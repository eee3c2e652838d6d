"""Command-line interface: one module per command group, registered in `app.COMMAND_MODULES`."""
