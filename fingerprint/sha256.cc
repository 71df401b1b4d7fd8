// Implementation pending: see sha256.h.
