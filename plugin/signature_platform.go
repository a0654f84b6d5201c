package plugin

import (
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"fmt"
	"os"
)

// BinaryPlatform returns the GOOS and GOARCH a binary was built for, read
// from its ELF, Mach-O or PE header, so that a statement signed on one
// machine for another names the right platform. An ELF binary without an
// OS-specific ABI or note is reported as linux. A universal Mach-O file,
// a script or an unknown machine returns an error wrapping
// ErrUnknownPlatform; failing to open the file returns that error.
func BinaryPlatform(path string) (goos, goarch string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	var magic [4]byte
	if _, err := f.ReadAt(magic[:], 0); err != nil {
		return "", "", fmt.Errorf("%w: %s is too short to be an executable", ErrUnknownPlatform, path)
	}
	switch {
	case string(magic[:]) == elf.ELFMAG:
		ef, err := elf.NewFile(f)
		if err != nil {
			return "", "", fmt.Errorf("%w: %s: %v", ErrUnknownPlatform, path, err)
		}
		return elfPlatform(ef, path)
	case magic[0] == 'M' && magic[1] == 'Z':
		pf, err := pe.NewFile(f)
		if err != nil {
			return "", "", fmt.Errorf("%w: %s: %v", ErrUnknownPlatform, path, err)
		}
		arch, ok := map[uint16]string{
			pe.IMAGE_FILE_MACHINE_AMD64: "amd64",
			pe.IMAGE_FILE_MACHINE_ARM64: "arm64",
			pe.IMAGE_FILE_MACHINE_I386:  "386",
		}[pf.Machine]
		if !ok {
			return "", "", fmt.Errorf("%w: %s: PE machine %#x", ErrUnknownPlatform, path, pf.Machine)
		}
		return "windows", arch, nil
	default:
		mf, err := macho.NewFile(f)
		if err != nil {
			return "", "", fmt.Errorf("%w: %s is not an ELF, Mach-O or PE executable", ErrUnknownPlatform, path)
		}
		arch, ok := map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[mf.Cpu]
		if !ok {
			return "", "", fmt.Errorf("%w: %s: Mach-O cpu %v", ErrUnknownPlatform, path, mf.Cpu)
		}
		return "darwin", arch, nil
	}
}

func elfPlatform(ef *elf.File, path string) (string, string, error) {
	var arch string
	switch ef.Machine {
	case elf.EM_X86_64:
		arch = "amd64"
	case elf.EM_AARCH64:
		arch = "arm64"
	case elf.EM_386:
		arch = "386"
	case elf.EM_ARM:
		arch = "arm"
	case elf.EM_RISCV:
		arch = "riscv64"
	case elf.EM_S390:
		arch = "s390x"
	case elf.EM_LOONGARCH:
		arch = "loong64"
	case elf.EM_PPC64:
		arch = "ppc64"
		if ef.ByteOrder.String() == "LittleEndian" {
			arch = "ppc64le"
		}
	default:
		return "", "", fmt.Errorf("%w: %s: ELF machine %v", ErrUnknownPlatform, path, ef.Machine)
	}
	goos := "linux"
	switch {
	case ef.OSABI == elf.ELFOSABI_FREEBSD:
		goos = "freebsd"
	case ef.Section(".note.netbsd.ident") != nil:
		goos = "netbsd"
	case ef.Section(".note.openbsd.ident") != nil:
		goos = "openbsd"
	case ef.OSABI == elf.ELFOSABI_SOLARIS:
		goos = "solaris"
	}
	return goos, arch, nil
}
