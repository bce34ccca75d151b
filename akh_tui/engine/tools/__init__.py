"""Tools: the interface a tool implements, the eleven built-ins, their declarations, and the
registry that loads plugins (and the trust a folder's code needs first)."""
