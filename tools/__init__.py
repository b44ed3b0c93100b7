"""Tools for working on Converge, not part of the app: the docs generator and the import graph it and the tests
read."""
