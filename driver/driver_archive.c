/* driver_archive.c — libNAME.a, written by ctx build itself: a System V (GNU)
 * archive of relocatable objects with the symbol index linkers need.
 *
 *   "!<arch>\n"
 *   "/"  member: count, each symbol's member offset (32-bit big-endian), the
 *        symbols' names, NUL-terminated, in member order (what ranlib writes)
 *   "//" member: the names longer than 15 characters, each "name/\n"
 *   the objects, each behind a 60-byte header ("name/" or "/offset" into
 *        "//"), padded to an even size with '\n'
 *
 * The index lists every symbol an object defines and others may link to
 * (global, weak or unique binding, in a section or common), read from the
 * object's ELF symbol table (ELF32 or ELF64 in the host's byte order: the
 * objects ctx and the C compiler made for this host). Dates, owners and modes
 * are fixed (0, 0, 0, 644) as `ar D` writes them, so one build writes the
 * same bytes twice.
 *
 * `ar -M` did this before; it spent 0.13 s of `ctx build`'s 0.6 loading the
 * linker plugins of every LLVM on the machine, and an MRI script cannot name
 * paths with blanks.
 */
#include "driver/driver_build.h"

#include <ar.h>
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *name;          /* the member's name (no directory) */
  const unsigned char *data; /* its bytes, inside an input's buffer */
  size_t size;
  const char *input; /* the path it came from */
} Member;

typedef struct {
  CtxArena *arena;         /* the members and their names */
  CtxVec members;          /* Member * */
  CtxVec buffers;          /* the inputs' bytes (malloc'd), which members point into */
  CtxBuf symbols;          /* the index's names, NUL-terminated */
  uint32_t *symbol_member; /* each symbol's member */
  size_t nsym, cap;
  char *error; /* the first error, malloc'd */
} Archive;

static bool fail(Archive *a, const char *fmt, const char *path, const char *why) {
  if (!a->error) {
    size_t n = strlen(fmt) + strlen(path) + strlen(why) + 1;
    a->error = ctx_xmalloc(n);
    snprintf(a->error, n, fmt, path, why);
  }
  return false;
}

/* [path]'s bytes into [*size], kept until the archive is written; NULL
 * after an error. */
static unsigned char *slurp(Archive *a, const char *path, size_t *size) {
  errno = 0;
  char *buf = ctx_read_file(path, size);
  if (!buf) fail(a, "cannot read '%s': %s", path, strerror(errno ? errno : EIO));
  else ctx_vec_push(a->arena, &a->buffers, buf);
  return (unsigned char *)buf;
}

/* ---- the symbols an object defines ----------------------------------------- */

/* Reads a [width]-byte unsigned field at [p] (host byte order). */
static uint64_t field(const unsigned char *p, int width) {
  if (width == 2) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
  }
  if (width == 4) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* The layout of ELF32 and ELF64 headers, section headers and symbols: the
 * offset and width of each field this file reads. */
typedef struct {
  int shoff, shoff_w, shentsize, shnum;        /* in the file header */
  int sh_type, sh_offset, sh_size, sh_link, w; /* in a section header; w: word width */
  int sym_size, st_info, st_shndx;             /* in a symbol */
} ElfLayout;

#define ELF_LAYOUT(Ehdr, Shdr, Sym, word)                                                \
  {                                                                                      \
    offsetof(Ehdr, e_shoff), word, offsetof(Ehdr, e_shentsize), offsetof(Ehdr, e_shnum), \
        offsetof(Shdr, sh_type), offsetof(Shdr, sh_offset), offsetof(Shdr, sh_size),     \
        offsetof(Shdr, sh_link), word, sizeof(Sym), offsetof(Sym, st_info),              \
        offsetof(Sym, st_shndx)                                                          \
  }
static const ElfLayout elf64 = ELF_LAYOUT(Elf64_Ehdr, Elf64_Shdr, Elf64_Sym, 8);
static const ElfLayout elf32 = ELF_LAYOUT(Elf32_Ehdr, Elf32_Shdr, Elf32_Sym, 4);

/* Whether [off, off + len) lies inside a member of [size] bytes. */
static bool inside(uint64_t off, uint64_t len, size_t size) {
  return off <= size && len <= size - off;
}

/* Adds the symbols member [m] (index [mi]) defines to the index. */
static bool index_member(Archive *a, const Member *m, uint32_t mi) {
  const char *path = m->input;
  const unsigned char *d = m->data;
  const uint16_t one = 1;
  const int host_data = *(const unsigned char *)&one ? ELFDATA2LSB : ELFDATA2MSB;
  if (m->size < EI_NIDENT || memcmp(d, ELFMAG, SELFMAG) != 0 || d[EI_DATA] != host_data ||
      (d[EI_CLASS] != ELFCLASS64 && d[EI_CLASS] != ELFCLASS32))
    return fail(a, "cannot index '%s': %s is not an ELF object of this host", path,
                m->name);
  const ElfLayout *L = d[EI_CLASS] == ELFCLASS64 ? &elf64 : &elf32;
  size_t ehsize = d[EI_CLASS] == ELFCLASS64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
  if (m->size < ehsize || field(d + offsetof(Elf64_Ehdr, e_type), 2) != ET_REL)
    return fail(a, "cannot index '%s': %s is not a relocatable object", path, m->name);
  uint64_t shoff = field(d + L->shoff, L->shoff_w),
           shentsize = field(d + L->shentsize, 2);
  uint64_t shnum = field(d + L->shnum, 2);
  if (shoff && shnum == 0 && inside(shoff, shentsize, m->size)) /* extended numbering */
    shnum = field(d + shoff + L->sh_size, L->w);
  if (shnum && (shentsize < (uint64_t)L->sh_link + 4 || shnum > m->size / shentsize ||
                !inside(shoff, shnum * shentsize, m->size)))
    return fail(a, "cannot index '%s': %s has a damaged section table", path, m->name);
  for (uint64_t i = 0; i < shnum; i++) {
    const unsigned char *sh = d + shoff + i * shentsize;
    if (field(sh + L->sh_type, 4) != SHT_SYMTAB) continue;
    uint64_t off = field(sh + L->sh_offset, L->w), size = field(sh + L->sh_size, L->w);
    uint64_t link = field(sh + L->sh_link, 4);
    const unsigned char *str = link < shnum ? d + shoff + link * shentsize : NULL;
    uint64_t str_off = str ? field(str + L->sh_offset, L->w) : 0;
    uint64_t str_size = str ? field(str + L->sh_size, L->w) : 0;
    if (!str || !inside(off, size, m->size) || !inside(str_off, str_size, m->size) ||
        str_size == 0 || d[str_off + str_size - 1] != '\0')
      return fail(a, "cannot index '%s': %s has a damaged symbol table", path, m->name);
    for (uint64_t s = 1; s < size / (uint64_t)L->sym_size; s++) {
      const unsigned char *sym = d + off + s * (uint64_t)L->sym_size;
      int bind = sym[L->st_info] >> 4;
      uint64_t shndx = field(sym + L->st_shndx, 2), name = field(sym, 4);
      if ((bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) ||
          shndx == SHN_UNDEF || name >= str_size)
        continue;
      const char *sname = (const char *)d + str_off + name;
      if (strncmp(sname, "__gnu_lto_", 10) == 0)
        return fail(a,
                    "cannot index '%s': %s holds GCC's LTO bytecode; build the "
                    "runtime without -flto",
                    path, m->name);
      ctx_buf_write(&a->symbols, sname, strlen(sname) + 1);
      if (a->nsym == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 256;
        a->symbol_member =
            ctx_xrealloc(a->symbol_member, a->cap * sizeof *a->symbol_member);
      }
      a->symbol_member[a->nsym++] = mi;
    }
  }
  return true;
}

/* ---- reading the inputs --------------------------------------------------- */

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static void add_member(Archive *a, const char *name, const unsigned char *data,
                       size_t size, const char *input) {
  Member *m = CTX_NEW(a->arena, Member);
  *m = (Member){name, data, size, input};
  ctx_vec_push(a->arena, &a->members, m);
}

/* The members of the archive [d] ([size] bytes, read from [path]); the
 * archive's own index and name table are not members. */
static bool add_archive(Archive *a, const char *path, const unsigned char *d,
                        size_t size) {
  const unsigned char *names = NULL;
  size_t names_size = 0;
  for (size_t at = SARMAG; at < size;) {
    char hdr[61];
    if (size - at < 60 || memcmp(d + at + 58, "`\n", 2) != 0)
      return fail(a, "cannot read '%s': %s", path, "a damaged archive member header");
    memcpy(hdr, d + at, 60);
    hdr[58] = '\0';
    char *end;
    unsigned long long msize = strtoull(hdr + 48, &end, 10);
    const unsigned char *data = d + at + 60;
    if (end == hdr + 48 || msize > size - at - 60)
      return fail(a, "cannot read '%s': %s", path,
                  "a member runs past the archive's end");
    hdr[16] = '\0';
    if (strncmp(hdr, "//", 2) == 0) {
      names = data;
      names_size = (size_t)msize;
    } else if (hdr[0] == '/' && (hdr[1] == ' ' || strncmp(hdr, "/SYM64/", 7) == 0)) {
      /* the index: written anew */
    } else {
      char *name;
      if (hdr[0] == '/') {
        unsigned long long off = strtoull(hdr + 1, &end, 10);
        if (end == hdr + 1 || !names || off >= names_size)
          return fail(a, "cannot read '%s': %s", path, "a member's long name is missing");
        const char *s = (const char *)names + off;
        size_t n = 0;
        while (off + n < names_size && s[n] != '/' && s[n] != '\n')
          n++;
        name = ctx_arena_strndup(a->arena, s, n);
      } else {
        size_t n = strcspn(hdr, "/ ");
        if (n == 0 || n > 15 || hdr[n] != '/')
          return fail(a, "cannot read '%s': %s", path,
                      "a member name in a format not read "
                      "here (only System V / GNU archives are)");
        name = ctx_arena_strndup(a->arena, hdr, n);
      }
      add_member(a, name, data, (size_t)msize, path);
    }
    at += 60 + (size_t)msize + (msize & 1);
  }
  return true;
}

/* ---- writing ------------------------------------------------------------ */

/* A member header: [name] as the 16-character name field, then date 0,
 * owner 0, group 0, mode 644 and [size] (below 4 GiB: 10 digits). */
static void header(CtxBuf *out, const char *name, size_t size) {
  char h[96];
  snprintf(h, sizeof h, "%-16.16s%-12s%-6s%-6s%-8s%-10zu`\n", name, "0", "0", "0", "644",
           size);
  ctx_buf_write(out, h, 60);
}

static void put_be32(CtxBuf *out, uint32_t v) {
  unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 8), (unsigned char)v};
  ctx_buf_write(out, (const char *)b, 4);
}

/* The archive's bytes into [out]. */
static bool write_archive(Archive *a, CtxBuf *out) {
  size_t n = (size_t)a->members.len, nsym = a->nsym;
  /* The long-name table and each member's name field. */
  CtxBuf longnames;
  ctx_buf_init(&longnames);
  char(*field_name)[17] = ctx_xmalloc((n ? n : 1) * sizeof *field_name);
  for (size_t i = 0; i < n; i++) {
    const char *name = ((const Member *)a->members.items[i])->name;
    if (strlen(name) <= 15) {
      snprintf(field_name[i], 17, "%s/", name);
    } else {
      snprintf(field_name[i], 17, "/%zu", longnames.len);
      ctx_buf_write(&longnames, name, strlen(name));
      ctx_buf_write(&longnames, "/\n", 2);
    }
  }
  /* The offsets: the index, then the long names, then the members. */
  size_t index_size = 4 + 4 * nsym + a->symbols.len;
  size_t at = SARMAG + 60 + index_size + (index_size & 1);
  if (longnames.len) at += 60 + longnames.len + (longnames.len & 1);
  uint32_t *offset = ctx_xmalloc((n ? n : 1) * sizeof *offset);
  bool ok = true;
  for (size_t i = 0; i < n; i++) {
    if (at > UINT32_MAX) ok = false;
    offset[i] = (uint32_t)at;
    size_t size = ((const Member *)a->members.items[i])->size;
    at += 60 + size + (size & 1);
  }
  if (!ok) {
    fail(a, "cannot write '%s': %s", "the archive", "larger than 4 GiB");
  } else {
    ctx_buf_write(out, ARMAG, SARMAG);
    header(out, "/", index_size);
    put_be32(out, (uint32_t)nsym);
    for (size_t s = 0; s < nsym; s++)
      put_be32(out, offset[a->symbol_member[s]]);
    ctx_buf_write(out, a->symbols.data, a->symbols.len);
    if (index_size & 1) ctx_buf_write(out, "\n", 1);
    if (longnames.len) {
      header(out, "//", longnames.len);
      ctx_buf_write(out, longnames.data, longnames.len);
      if (longnames.len & 1) ctx_buf_write(out, "\n", 1);
    }
    for (size_t i = 0; i < n; i++) {
      const Member *m = a->members.items[i];
      header(out, field_name[i], m->size);
      ctx_buf_write(out, (const char *)m->data, m->size);
      if (m->size & 1) ctx_buf_write(out, "\n", 1);
    }
  }
  free(offset);
  free(field_name);
  ctx_buf_free(&longnames);
  return ok;
}

bool ctx_archive_write(const char *out_path, const char *const *inputs, int n,
                       char **error) {
  Archive a;
  memset(&a, 0, sizeof a);
  a.arena = ctx_arena_new();
  ctx_buf_init(&a.symbols);
  bool ok = true;
  for (int i = 0; ok && i < n; i++) {
    size_t size;
    const unsigned char *d = slurp(&a, inputs[i], &size);
    if (!d)
      ok = false;
    else if (size >= SARMAG && memcmp(d, ARMAG, SARMAG) == 0)
      ok = add_archive(&a, inputs[i], d, size);
    else
      add_member(&a, base_name(inputs[i]), d, size, inputs[i]);
  }
  for (int m = 0; ok && m < a.members.len; m++)
    ok = index_member(&a, a.members.items[m], (uint32_t)m);
  CtxBuf bytes;
  ctx_buf_init(&bytes);
  if (ok) ok = write_archive(&a, &bytes);
  if (ok) {
    errno = 0;
    FILE *f = fopen(out_path, "wb");
    bool written = f && fwrite(bytes.data, 1, bytes.len, f) == bytes.len;
    if (f && fclose(f) != 0) written = false;
    if (!written)
      ok = fail(&a, "cannot write '%s': %s", out_path, strerror(errno ? errno : EIO));
  }
  ctx_buf_free(&bytes);
  *error = a.error;
  free(a.symbol_member);
  ctx_buf_free(&a.symbols);
  for (int i = 0; i < a.buffers.len; i++) free(a.buffers.items[i]);
  ctx_arena_free(a.arena);
  return ok;
}
