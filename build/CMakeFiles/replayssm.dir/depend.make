# Empty dependencies file for replayssm.
# This may be replaced when dependencies are built.
