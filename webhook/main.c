/* main.c - the dra-guard command line. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "version") == 0) {
		printf("dra-guard %s\n", DRA_GUARD_VERSION);
		return 0;
	}
	fprintf(stderr, "usage: dra-guard version\n");
	return 2;
}
