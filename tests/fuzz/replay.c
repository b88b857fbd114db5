// SPDX-License-Identifier: MIT
/*
 * Replays fuzz inputs without libFuzzer: main() feeds every file named on the
 * command line, and every regular file of every directory named (sorted by
 * name, not recursive), to the target's LLVMFuzzerTestOneInput(). A path
 * after --optional may be missing (a target's regress/ directory before its
 * first reproducer). Built with
 * every fuzz target in every build (gcc, ASan, TSan), so the seed corpus and
 * the crash reproducers in tests/fuzz/regress run as ordinary tests.
 *
 * A target reports a broken invariant by aborting, as under libFuzzer. Exit 0
 * when every input ran, 1 when an argument cannot be read or no input was
 * found (an empty corpus must not pass for a tested one).
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long len;

	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	/* a private copy of exactly len bytes: ASan sees any over-read */
	buf = malloc(len ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "replay: %s: short read\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	printf("replay: %s (%ld bytes)\n", path, len);
	fflush(stdout);
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int skip_entry(const struct dirent *e)
{
	return e->d_name[0] != '.';
}

/* Returns the number of inputs run, or -1. */
static int run_dir(const char *dir)
{
	struct dirent **list;
	int n = scandir(dir, &list, skip_entry, by_name), ran = 0;

	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			if (run_file(path))
				ran = -1;
			else if (ran >= 0)
				ran++;
		}
		free(list[i]);
	}
	free(list);
	return ran;
}

int main(int argc, char **argv)
{
	int total = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s [--optional] file-or-dir ...\n", argv[0]);
		return 1;
	}
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		bool optional = !strcmp(argv[i], "--optional") && i + 1 < argc;
		struct stat st;
		int n;

		i += optional;
		if (stat(argv[i], &st)) {
			if (optional && errno == ENOENT)
				continue;
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		n = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]) ? -1 : 1;
		if (n < 0)
			return 1;
		total += n;
	}
	if (total == 0) {
		fprintf(stderr, "replay: no input found\n");
		return 1;
	}
	printf("replay: %d inputs, no failure\n", total);
	return 0;
}
