// Implementation pending: see file_hash.h.
