/*
 * wide_stdio - wide-character stdio on pipes, from threads: four readers,
 * each on its own pipe with another call (fgetws, fgetwc, fwscanf, getwc),
 * wait for a writer thread that writes after a nap; then a thread writes
 * wide text (fputws, fputwc, fwprintf) into a pipe whose reader naps first,
 * so the pipe fills and the writer must wait for room. glibc reads and
 * writes these through its internal read/write: under corun with one
 * worker a reader or writer blocked there held the worker, and the thread
 * it waited for never ran (scripts/tests/wide_stdio.sh). Prints what each
 * reader got and the size and sum of the output.
 */
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <wchar.h>

#define READERS 4
static int in_pipes[READERS][2];
static long got[READERS];

static void *reader(void *arg)
{
    long i = (long)arg;
    FILE *f = fdopen(in_pipes[i][0], "r");
    if (!f)
        exit(2);
    wchar_t buf[128];
    wint_t c;
    long n = 0;
    switch (i) {
    case 0:
        while (fgetws(buf, 128, f))
            n += (long)wcslen(buf);
        break;
    case 1:
        while ((c = fgetwc(f)) != WEOF)
            n++;
        break;
    case 2:
        while (fwscanf(f, L"%127ls", buf) == 1)
            n += (long)wcslen(buf);
        break;
    default:
        while ((c = getwc(f)) != WEOF)
            n += c == L'ö';
        break;
    }
    fclose(f);
    got[i] = n;
    return NULL;
}

static void *late_writer(void *arg)
{
    (void)arg;
    usleep(50000);
    for (int i = 0; i < READERS; i++) {
        for (int k = 0; k < 3; k++)
            if (write(in_pipes[i][1], "h\xc3\xa9llo w\xc3\xb6rld\n", 14) != 14)
                exit(3);
        close(in_pipes[i][1]);
    }
    return NULL;
}

static int out_pipe[2];

static void *wide_writer(void *arg)
{
    (void)arg;
    FILE *f = fdopen(out_pipe[1], "w");
    if (!f)
        exit(4);
    wchar_t line[101];
    for (int k = 0; k < 99; k++)
        line[k] = k % 2 ? L'é' : L'a' + k % 26;
    line[99] = L'\n';
    line[100] = 0;
    for (int r = 0; r < 1000; r++) {
        fputws(line, f);
        fputwc(L'ö', f);
        fwprintf(f, L"%d: %ls", r, L"wide\n");
    }
    fclose(f);
    return NULL;
}

int main(void)
{
    setlocale(LC_ALL, "C.UTF-8");
    pthread_t r[READERS], w;
    for (long i = 0; i < READERS; i++) {
        if (pipe(in_pipes[i]))
            return 1;
        pthread_create(&r[i], NULL, reader, (void *)i);
    }
    pthread_create(&w, NULL, late_writer, NULL);
    for (int i = 0; i < READERS; i++)
        pthread_join(r[i], NULL);
    pthread_join(w, NULL);
    printf("readers: fgetws %ld chars, fgetwc %ld chars, fwscanf %ld chars, getwc %ld o-umlauts\n",
           got[0], got[1], got[2], got[3]);

    if (pipe(out_pipe))
        return 1;
    pthread_create(&w, NULL, wide_writer, NULL);
    usleep(100000); /* the writer fills the pipe meanwhile */
    unsigned long bytes = 0, sum = 0;
    unsigned char buf[4096];
    ssize_t k;
    while ((k = read(out_pipe[0], buf, sizeof buf)) > 0)
        for (ssize_t j = 0; j < k; j++, bytes++)
            sum = sum * 31 + buf[j];
    pthread_join(w, NULL);
    printf("output: %lu bytes, sum %lu\n", bytes, sum);
    return 0;
}
