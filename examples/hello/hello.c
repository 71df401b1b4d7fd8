// SPDX-License-Identifier: Apache-2.0
/* The bundled example that `sealrun demo` builds: a small C program whose output depends only on
 * its source and SOURCE_DATE_EPOCH, so two contained builds give byte-identical results. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  const char* epoch = getenv("SOURCE_DATE_EPOCH");
  printf("hello from a sealed build (SOURCE_DATE_EPOCH=%s)\n", epoch ? epoch : "unset");
  return 0;
}
