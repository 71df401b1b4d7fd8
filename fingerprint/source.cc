// Implementation pending: see source.h.
