# Empty dependencies file for replayssm_cli.
# This may be replaced when dependencies are built.
