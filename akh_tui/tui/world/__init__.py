"""The world workbench (issue 26): several agents of one world, watched and steered."""
