"""word2vec: skip-gram with negative sampling, written out with its gradient by hand, and what its vectors learn."""
