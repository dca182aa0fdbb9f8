/* The floor for any cross-process IPC on this machine: a 1-byte Unix socket round trip. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static long long now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
static int cmp(const void*a,const void*b){long long x=*(long long*)a,y=*(long long*)b;return x<y?-1:x>y;}
int main(){int sv[2];socketpair(AF_UNIX,SOCK_STREAM,0,sv);int n=20000;char c='x';
 if(fork()==0){close(sv[0]);for(int i=0;i<n;i++){read(sv[1],&c,1);write(sv[1],&c,1);}_exit(0);}
 close(sv[1]);long long*s=malloc(n*sizeof(long long));
 for(int i=0;i<n;i++){long long t=now();write(sv[0],&c,1);read(sv[0],&c,1);s[i]=now()-t;}
 qsort(s,n,sizeof(long long),cmp);printf("unix socket round trip between 2 processes: p50 %.1f us p99 %.1f us\n",s[n/2]/1000.0,s[n*99/100]/1000.0);}
