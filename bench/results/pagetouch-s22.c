/* bench/results/pagetouch-s22.c -- cost of the first access to each 4 KiB page of a
 * 64 MiB mapping on this VM: anonymous, shared (new mapping of existing pages),
 * after MAP_POPULATE, MADV_WILLNEED, MADV_POPULATE_READ/WRITE (session s22,
 * bench/README.md "Cold first batch", round 4).  gcc -O2 pagetouch-s22.c -lrt */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/resource.h>
#include <string.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
static long minflt(){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_minflt;}
#define SZ (64L<<20)
static void touch(char*p,long n,int wr){volatile char s=0;for(long i=0;i<n;i+=4096){if(wr)p[i]=1;else s+=p[i];}}
static void run(const char*name,char*p,int wr){long f=minflt();double t=now();touch(p,SZ,wr);double e=now()-t;printf("%-40s %8.2f ms %6ld faults  %.2f us/page\n",name,e,minflt()-f,e*1000/(SZ/4096));}
int main(){
 char*p;double t;long f;
 p=mmap(0,SZ,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);run("anon write",p,1);munmap(p,SZ);
 f=minflt();t=now();p=mmap(0,SZ,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE,-1,0);printf("anon populate mmap %.2f ms %ld faults\n",now()-t,minflt()-f);run("anon write after populate",p,1);munmap(p,SZ);
 int fd=shm_open("/pftest",O_CREAT|O_RDWR,0600);ftruncate(fd,SZ);
 p=mmap(0,SZ,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0);run("shm write (allocating)",p,1);munmap(p,SZ);
 p=mmap(0,SZ,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0);run("shm read existing (new map)",p,0);munmap(p,SZ);
 p=mmap(0,SZ,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0);run("shm write existing (new map)",p,1);munmap(p,SZ);
 f=minflt();t=now();p=mmap(0,SZ,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_POPULATE,fd,0);printf("shm populate mmap %.2f ms %ld faults\n",now()-t,minflt()-f);run("shm write after populate",p,1);munmap(p,SZ);
 p=mmap(0,SZ,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0);t=now();madvise(p,SZ,MADV_WILLNEED);printf("willneed %.2f ms\n",now()-t);run("shm write after willneed",p,1);munmap(p,SZ);
 p=mmap(0,SZ,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0);t=now();f=minflt();int r=madvise(p,SZ,23/*MADV_POPULATE_READ*/);printf("populate_read r=%d %.2f ms %ld\n",r,now()-t,minflt()-f);run("shm read after POPULATE_READ",p,0);run("shm write after POPULATE_READ",p,1);munmap(p,SZ);
 p=mmap(0,SZ,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0);t=now();f=minflt();r=madvise(p,SZ,24/*MADV_POPULATE_WRITE*/);printf("populate_write r=%d %.2f ms %ld\n",r,now()-t,minflt()-f);run("shm write after POPULATE_WRITE",p,1);munmap(p,SZ);
 shm_unlink("/pftest");
}
